# test_launcher: unit tests of the xtrain_launcher library, and real-process tests of the xrun executable.
target_link_libraries(test_${_name} PRIVATE xtrain_launcher)
target_sources(test_${_name} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/process_helpers.cpp)
add_dependencies(test_${_name} xrun)
# ipu_allocation_test.cpp trains with xtrain under xrun.
add_dependencies(test_${_name} xtrain_tool)
# hang_report_test.cpp runs the comm worker (tests/comm/worker) under xrun.
if(TARGET xtrain_comm_worker)
  add_dependencies(test_${_name} xtrain_comm_worker)
endif()
