import sys

from workloads.pipeline import main

sys.exit(main())
