target_link_libraries(test_${_name} PRIVATE nlohmann_json::nlohmann_json)
