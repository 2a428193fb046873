"""geogpu.distributed: batches of scenes, pairs and tiles over Dask, one
worker per GPU.

Three kinds of batch, each a list of independent tasks that write their own
output files:

    from geogpu import distributed as gd
    with gd.open_client() as client:        # one worker per GPU (CPU workers without one)
        gd.ortho_batch(client, scenes, "orthos/", ["-dem", "dem.tif", "-t_srs", "EPSG:32632"])
        gd.pair_batch(client, "gdal_insar", [("a.tif", "b.tif")], "ifgs/", ["-looks", "4", "1"])
        gd.tile_batch(client, "ptsel", ["stack.tif"], "ps.vrt", window=11, mask=True)

- **scenes** (``ortho_batch``, ``warp_batch``) and **pairs** (``pair_batch``: gdal_insar,
  gdal_xcorr, gdal_coreg, ...): one task per scene or pair runs the geogpu
  utility on its worker's device (``-device``) and writes its own files.
  gdal_ortho runs *in-process* by default: the worker calls the utility's
  own entry point (``gg_ortho_run`` of libgeogpu_gdal, geogpu_gdal.h) with
  the device context it keeps for all its tasks, instead of starting a
  process, and a CUDA context, per task (``ortho_batch``'s ``in_process``);
- **tiles** (``tile_batch``): one task per output tile reads the tile's input
  window with its halo (the op's ``source_window``: r/2 for PtSel, the
  coherence window and looks, ...) as it lies in the file or through GDAL
  (several threads, into host buffers the worker keeps from tile to tile),
  computes the tile with libgeogpu on the worker's device
  (``Prepared.run_tile``) and writes only the tile's own pixels; a VRT mosaic of the tiles is then written (and, for a
  destination that is not ``.vrt``, translated into it).

Every task writes into a private temporary folder beside its outputs, moves
its files into place (``os.replace``) and then writes a completion marker
(``<outdir>/.geogpu/<name>.done``: what was computed from what, and the size
and mtime of each file).  A re-run skips every output whose marker is still
valid, so a batch interrupted by a dead worker, a dead client or a reboot
loses at most the tasks in flight; a batch is over once every marker is
there.  Failed tasks are retried (``retries``); a task lost with its worker
is rescheduled by Dask (``distributed.scheduler.allowed-failures``).  A task that still fails is
reported and the rest of the batch completes, as with ``gdal_ortho -outdir``.

The cluster (``start_cluster``/``open_client``) is dask-cuda's
LocalCUDACluster idea on Debian's python3-distributed: one Nanny per GPU,
``nthreads=1``, ``CUDA_VISIBLE_DEVICES`` set to its GPU (``GG_DEVICE=cuda:0``
inside), a ``GPU=1`` resource; N CPU workers when there is no GPU; or any
existing scheduler (``open_client("tcp://host:8786")``, workers started with
``python3 -m geogpu.distributed workers``).  Files are exchanged through a
filesystem every worker sees under the same paths.

Command line: ``python3 -m geogpu.distributed ortho|insar|xcorr|coreg|pairs|
ptsel|tiles|workers ...`` (``--help``).  See docs/distributed.md.
"""

# one module per part, each saying what it does: cluster (workers and
# clients), worker (what a task knows of its worker), markers (safe outputs,
# re-runs), utility_tasks (scenes and pairs), batches (submitting and ending
# a batch), reads (a tile's input), tile_tasks (a tile task on its worker),
# tiling (tile_batch and its mosaic), cli (the command line)
from .batches import Batch, TaskRecord, ortho_batch, pair_batch, warp_batch
from .cli import main
from .cluster import (cuda_devices, open_client, settle, start_cluster, warm_up, worker_specs,
                      workers)
from .markers import STATE_DIR, TaskError
from .tile_tasks import tile_grid
from .tiling import tile_batch

__all__ = ["start_cluster", "open_client", "settle", "worker_specs", "cuda_devices", "workers",
           "warm_up", "ortho_batch", "warp_batch", "pair_batch", "tile_batch", "tile_grid", "Batch", "TaskRecord",
           "TaskError", "main"]
