"""scaleout: the library behind the Scale-Out Workbook.

One module per concept, in the order the workbook walks them:

=============  =====================================================  ===========
module         what it models                                         notebook
=============  =====================================================  ===========
``units``      bytes/bits, GB/GiB, Gb/s vs GB/s, per direction        00, 01
``catalog``    GPUs, scale-up systems and models from ``data/``       01
``memory``     parameters, ZeRO model state, activations per GPU      01, 02
``compute``    FLOPs, MFU/HFU, training time                          01, 02
``widgets``    ipywidgets front ends (no model logic)                 01, 02
``plotting``   matplotlib figures (no model logic)                    01, 02
=============  =====================================================  ===========
"""

from . import catalog, checks, compute, memory, units

__all__ = ["catalog", "checks", "compute", "memory", "units"]
__version__ = "0.1.0"
