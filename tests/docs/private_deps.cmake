# The programs exit_codes_doc_test.cpp runs (each in a lock directory of its own, XTRAIN_IPU_LOCK_DIR).
add_dependencies(test_${_name} xtrain_tool xckpt_tool xrun)
if(TARGET xbench)
  add_dependencies(test_${_name} xbench)
endif()
