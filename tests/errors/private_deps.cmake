# error_classes_test.cpp makes collectives fail for real (a timeout, a lost peer, a mismatch).
target_link_libraries(test_errors PRIVATE xtrain_comm)
# It attaches IPUs, but in a lock directory of its own (XTRAIN_IPU_LOCK_DIR).
