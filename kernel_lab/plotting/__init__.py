"""Plots with pyqtgraph, shared by the window and the headless outputs.

- :mod:`~kernel_lab.plotting.view`: one declared plot drawn and updated in place
  (:class:`~kernel_lab.plotting.view.PlotView`), styled by curve role;
- :mod:`~kernel_lab.plotting.render`: plots to PNG without a window;
- :mod:`~kernel_lab.plotting.report`: a self-contained HTML report of a run.

Imported lazily (it loads Qt); nothing below the GUI and the command line imports it.
"""
