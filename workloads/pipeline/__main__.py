import sys

from workloads.pipeline import main

import workloads

sys.exit(workloads.run("pipeline", main))
