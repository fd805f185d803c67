"""The server-side store of a dashboard instance.

* :mod:`app.store.data_store`: :class:`DataStore`, the disk-backed store of
  parsed predictions and fitted results (its keys, access control and
  storage faults are described there);
* :mod:`app.store.budget`: the store's hard size bound, admission of large
  writes, eviction of idle sessions only, and the "server full" refusal;
* :mod:`app.store.disk`: the disk layer (the cache, its errors, arrays as
  ``.npy`` files);
* :mod:`app.store.upkeep`: what reads noted, written by each process's
  sweeper thread once a minute, with expiry that frees disk and memory;
* :mod:`app.store.records`: what the store keeps about a model
  (:class:`ModelInfo`, :class:`FitRecord`) and the per-process cache of
  Predictions;
* :mod:`app.store.extra_columns`: the file's other columns (groups, times)
  as the store keeps them (text as integer codes plus its values);
* :mod:`app.store.soft_label_store`: the soft labels (``h_<class>`` columns)
  of uploaded models, kept next to their predictions.
"""
