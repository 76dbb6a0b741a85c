import sys

from loom_sim.studio.app import main

sys.exit(main())
