import sys

from grader.instructor.cli import main

sys.exit(main())
