"""Prints its arguments as one JSON line, to show they arrived literally."""
import json
import sys

print(json.dumps(sys.argv[1:]), flush=True)
