import sys

from workloads.conv import main

sys.exit(main())
