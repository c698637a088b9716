"""Data: where a run's data come from and how files are read.

- :mod:`~kernel_lab.data.source` — :class:`~kernel_lab.data.source.DataSource` (a generator,
  a bundled example or a file, with its options; the ``--data`` text form),
  ``load_data``, the file options;
- :mod:`~kernel_lab.data.generators`, :mod:`~kernel_lab.data.examples` — synthetic data
  and the bundled tables;
- :mod:`~kernel_lab.data.read` — ``load_table``, one entry for every format: one module per
  format (:mod:`~kernel_lab.data.text` for CSV/TSV, compressed too;
  :mod:`~kernel_lab.data.excel`, :mod:`~kernel_lab.data.svmlight`,
  :mod:`~kernel_lab.data.arff`, :mod:`~kernel_lab.data.npy`,
  :mod:`~kernel_lab.data.matlab`, :mod:`~kernel_lab.data.parquet`), the bytes themselves in
  :mod:`~kernel_lab.data.raw`;
- :mod:`~kernel_lab.data.partitioned` — a folder of Parquet files or a Zarr store opened as
  parts (:mod:`kernel_lab.core.rows`), read where they are used, never gathered;
- :mod:`~kernel_lab.data.table` — the table and the pipeline every text table goes
  through (header, column types, encoding, missing values);
- :mod:`~kernel_lab.data.split` — subsample and train/test split.

The container a run uses, :class:`~kernel_lab.core.rows.dataset.Dataset`, and the synthetic law
the theory reads stay in core. This package may import core; it imports no Qt and starts
no thread.
"""
