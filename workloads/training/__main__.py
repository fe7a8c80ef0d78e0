import sys

from . import main

import workloads

sys.exit(workloads.run("training", main))
