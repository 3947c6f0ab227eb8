# Installs scn, relocates the install, and uses it as a user would (see CMakeLists.txt here).
set(first ${WORK}/prefix-installed)
set(prefix ${WORK}/prefix-moved)
set(data ${WORK}/data)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${data})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
# A clean environment: no LD_LIBRARY_PATH, nothing but the system tools on PATH.
set(clean env -i PATH=/usr/bin:/bin)

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${first})
# Relocate: copy (symlinks kept) and remove the first prefix, so nothing can point into it.
file(COPY ${first}/ DESTINATION ${prefix})
file(REMOVE_RECURSE ${first})
find_program(READELF readelf)
if(READELF)
  file(GLOB libs ${prefix}/lib*/libscn.so.*.*)
  foreach(f ${prefix}/bin/scn ${libs})
    execute_process(COMMAND ${READELF} -d ${f} OUTPUT_VARIABLE dyn)
    if(dyn MATCHES "${BUILD_DIR}")
      message(FATAL_ERROR "${f} has a run path into the build tree:\n${dyn}")
    endif()
  endforeach()
endif()

# The installed scn on a synthetic frame and a small model.
run(${MODEL_WRITER} ${data}/model.onnx)
run(${clean} ${prefix}/bin/scn --version)
run(${clean} ${prefix}/bin/scn synth --voxels 3000 --seed 7 --features ${data}/f.tensor
    --indices ${data}/i.tensor --quiet)
execute_process(COMMAND ${clean} ${prefix}/bin/scn run ${data}/model.onnx --features ${data}/f.tensor
                        --indices ${data}/i.tensor --grid 41x1440x1440 --device auto --precision fp16
                        --output ${data}/scn_out.tensor RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed scn run failed (${rc}):\n${out}${err}")
endif()
message(STATUS "${out}")

# A consumer project with a different build type than scn's, run with the clean environment.
run(${CMAKE_COMMAND} -S ${CONSUMER_SRC} -B ${WORK}/consumer-build -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_BUILD_TYPE=${CONSUMER_BUILD_TYPE})
run(${CMAKE_COMMAND} --build ${WORK}/consumer-build)
run(${clean} ${WORK}/consumer-build/consumer_by_hand)
run(${clean} ${WORK}/consumer-build/consumer ${data}/model.onnx ${data}/f.tensor ${data}/i.tensor
    ${data}/consumer_out.tensor)
# Same defaults (Auto, Fp16) as `scn run --device auto --precision fp16`: on the CPU the same bits;
# on CUDA each process runs its own autotuner, whose tile choices may differ, so a tight bound.
if(out MATCHES "backend +cuda")
  set(bound --min-cosine 0.99999 --max-rel-l2 1e-3)
else()
  set(bound --max-abs 0)
endif()
execute_process(COMMAND ${clean} ${prefix}/bin/scn compare ${data}/consumer_out.tensor ${data}/scn_out.tensor
                        ${bound} --detail RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR out MATCHES "absmax 0,")
  message(FATAL_ERROR "consumer output differs from scn run's, or is all zero (rc ${rc}):\n${out}${err}")
endif()
message(STATUS "installed scn and consumer (${CONSUMER_BUILD_TYPE}) ran from ${prefix}")
