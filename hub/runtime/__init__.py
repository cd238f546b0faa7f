"""One running hub: what it opens at start (``hub.py``) and the data dir it keeps private
(``data_dir.py``)."""
