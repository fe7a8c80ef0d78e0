import sys

from workloads.conv import main

import workloads

sys.exit(workloads.run("conv", main))
