"""Plots with pyqtgraph, shared by the window and the headless outputs.

- :mod:`~kernel_lab.plotting.view`: one declared plot drawn and updated in place
  (:class:`~kernel_lab.plotting.view.PlotView`), styled by curve role
  (:mod:`~kernel_lab.plotting.styles`), its legend beside it
  (:mod:`~kernel_lab.plotting.legend`);
- :mod:`~kernel_lab.plotting.ranges`: the y range a plot shows and how live axes follow
  the data, plain functions without Qt;
- :mod:`~kernel_lab.plotting.render`: plots to PNG without a window;
- :mod:`~kernel_lab.plotting.report`: a self-contained HTML report of a run.

Imported lazily (it loads Qt, all but :mod:`~kernel_lab.plotting.ranges`); nothing below the
GUI and the command line imports it.
"""
