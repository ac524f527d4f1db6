# Algorithm selection: NCCL_ALGO/NCCL_PROTO parsing, the cost model's choices, the tuner plugin ABI.
set(ATOLL_TEST_TUNER_DIR ${CMAKE_CURRENT_BINARY_DIR}/tuner_plugins)
foreach(ver v4 v3)
  add_library(test_tuning_plugin_${ver} MODULE ${CMAKE_CURRENT_LIST_DIR}/tuning_test_plugin.c)
  target_include_directories(test_tuning_plugin_${ver} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  set_target_properties(test_tuning_plugin_${ver} PROPERTIES PREFIX "" OUTPUT_NAME libnccl-tuner-atolltest-${ver}
                        LIBRARY_OUTPUT_DIRECTORY ${ATOLL_TEST_TUNER_DIR})
endforeach()
target_compile_definitions(test_tuning_plugin_v3 PRIVATE ATOLL_TEST_TUNER_V3)

add_executable(test_tuning ${CMAKE_CURRENT_LIST_DIR}/test_tuning.cc)
target_link_libraries(test_tuning PRIVATE atoll_static GTest::gtest_main)
target_compile_definitions(test_tuning PRIVATE ATOLL_TEST_TUNER_DIR="${ATOLL_TEST_TUNER_DIR}")
add_dependencies(test_tuning test_tuning_plugin_v4 test_tuning_plugin_v3)
gtest_discover_tests(test_tuning DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 60)

add_executable(test_calibration ${CMAKE_CURRENT_LIST_DIR}/test_calibration.cc)
target_link_libraries(test_calibration PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_calibration DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 60)
