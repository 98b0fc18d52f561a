"""Libraries featurised once and kept: the on-disk cache (:mod:`.cache`, administered by
:mod:`.cache_admin`), featurising in chunks on every core (:mod:`.featurise`,
:mod:`.chunk_maps`), sharded library stores (:mod:`.store`, :mod:`.store_build`) and batch
Thompson sampling's sign features (:mod:`.sign_store`)."""
