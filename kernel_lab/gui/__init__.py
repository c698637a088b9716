"""The Qt layer: the main window, panels, plot views and offscreen rendering.

Only draws and dispatches; every computation goes through :mod:`kernel_lab.engine`.
"""
