import sys

from fairsim.whatif.cli import main

sys.exit(main())
