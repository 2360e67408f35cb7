# The zoo cases run xtrain (and xrun for 2 instances x 2 replicas) on the committed models in
# tests/data/zoo. Jobs started with xrun take the pool's IPUs from index 0 (XTRAIN_IPU_IDS), so
# these tests never overlap other pool users.
set(_test_properties RESOURCE_LOCK xtrain_ipu_pool LABELS zoo)
add_dependencies(test_${_name} xtrain_tool xrun)
