# Jobs started with xrun take the pool's IPUs from index 0 (XTRAIN_IPU_IDS): two at once would find them
# busy, so these tests never overlap each other or other pool users.
set(_test_properties RESOURCE_LOCK xtrain_ipu_pool)
# The programs these tests run.
add_dependencies(test_${_name} xtrain_tool xrun)
if(TARGET xbench)
  add_dependencies(test_${_name} xbench)
endif()
target_link_libraries(test_${_name} PRIVATE nlohmann_json::nlohmann_json)
