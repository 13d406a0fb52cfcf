import sys

from foxhunt.cli import main

sys.exit(main())
