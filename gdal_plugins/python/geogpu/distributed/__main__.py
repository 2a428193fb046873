"""python3 -m geogpu.distributed: the command line (cli.py).

The task functions live in the package's modules, never in __main__, so
they travel to the workers by reference and run with each worker's own
module state (the buffers it keeps), not pickled by value."""
import sys

from geogpu.distributed.cli import main

sys.exit(main())
