# The default CUDA architectures: every current NVIDIA data-centre, workstation, consumer and Jetson
# GPU generation that scn's kernels run on (they need sm_80 or newer), as far as the installed nvcc
# can compile for it:
#   80 A100, A30          86 RTX 30xx, A10, A40      87 Jetson Orin     89 RTX 40xx, L4, L40
#   90 H100, H200, GH200  100 B200, GB200            120 RTX 50xx, RTX PRO Blackwell
# Each architecture gets SASS and PTX (CMake's plain number), so a newer GPU of the same major
# version can JIT the PTX. A list given with -DCMAKE_CUDA_ARCHITECTURES=... is used as it is
# (scripts/test.sh passes a shorter one to keep CI's build time in check).

set(SCN_CUDA_ARCHITECTURES_WANTED 80 86 87 89 90 100 120)

# scn_default_cuda_architectures(<out-var>): the wanted list filtered by `nvcc --list-gpu-code`
# (nvcc 11.1+); an nvcc that cannot list them gets the list its version is known to support.
function(scn_default_cuda_architectures out)
  execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --list-gpu-code
                  OUTPUT_VARIABLE _codes ERROR_QUIET RESULT_VARIABLE _rc)
  set(_supported "")
  if(_rc EQUAL 0 AND _codes MATCHES "sm_")
    string(REGEX MATCHALL "sm_[0-9]+" _codes "${_codes}")
    string(REPLACE "sm_" "" _supported "${_codes}")
  else()
    execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --version OUTPUT_VARIABLE _ver ERROR_QUIET)
    string(REGEX MATCH "release ([0-9]+)\\.([0-9]+)" _m "${_ver}")
    set(_v "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
    set(_supported 80 86)
    if(_v VERSION_GREATER_EQUAL 11.4)
      list(APPEND _supported 87)
    endif()
    if(_v VERSION_GREATER_EQUAL 11.8)
      list(APPEND _supported 89 90)
    endif()
    if(_v VERSION_GREATER_EQUAL 12.8)
      list(APPEND _supported 100 120)
    endif()
  endif()
  set(_list "")
  set(_missing "")
  foreach(_a ${SCN_CUDA_ARCHITECTURES_WANTED})
    if(_a IN_LIST _supported)
      list(APPEND _list ${_a})
    else()
      list(APPEND _missing ${_a})
    endif()
  endforeach()
  if(_missing)
    string(REPLACE ";" ", " _missing "${_missing}")
    message(STATUS "scn: this nvcc cannot compile for ${_missing}: left out of CMAKE_CUDA_ARCHITECTURES")
  endif()
  if(NOT _list)
    message(FATAL_ERROR "scn: ${CMAKE_CUDA_COMPILER} supports none of ${SCN_CUDA_ARCHITECTURES_WANTED} "
                        "(scn's CUDA kernels need sm_80 or newer); install a newer CUDA toolkit or "
                        "configure with -DSCN_WITH_CUDA=OFF")
  endif()
  set(${out} ${_list} PARENT_SCOPE)
endfunction()
