# Start-up time of the tools (docs/PERFORMANCE.md, "Start-up and compile"): with the C++ libraries
# they use (protobuf, gRPC and Abseil, ANTLR, hwloc, libstdc++) loaded as shared objects, the dynamic
# loader spent three quarters of `mscale-cli --version` resolving symbols across 66 libraries. With
# MSC_STATIC_DEPS those libraries come from Debian's static archives instead, so only a few C
# libraries (libc, libm, libudev, libibverbs, libtinfo, libbpf, libelf) are loaded at run time.
# libibverbs stays shared: its device drivers are plug-ins it loads by name.
#
# All or nothing: protobuf linked statically next to a shared gRPC (which needs libprotobuf.so)
# would put two copies of the descriptor pool in one process.
if(MSC_SANITIZE OR MSC_FUZZ)
  set(msc_static_default OFF)
else()
  set(msc_static_default ON)
endif()
option(MSC_STATIC_DEPS "Link the third-party C++ libraries statically into the tools (start-up time)"
       ${msc_static_default})

# msc_static_archive_for(OUT PATH): PATH's static archive (libX.so[.N] -> libX.a beside it), or "".
function(msc_static_archive_for out path)
  set(${out} "" PARENT_SCOPE)
  if(path MATCHES "^(.*/lib[^/]+)\\.so(\\.[0-9.]+)?$")
    set(archive "${CMAKE_MATCH_1}.a")
    if(EXISTS "${archive}")
      set(${out} "${archive}" PARENT_SCOPE)
    endif()
  endif()
endfunction()

# Points every imported library target of this directory that names a shared object at the static
# archive beside it, where Debian ships one.
function(msc_prefer_static_archives)
  get_property(targets DIRECTORY ${PROJECT_SOURCE_DIR} PROPERTY IMPORTED_TARGETS)
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(SHARED_LIBRARY|UNKNOWN_LIBRARY)$")
      continue()
    endif()
    foreach(property IMPORTED_LOCATION IMPORTED_LOCATION_NONE IMPORTED_LOCATION_RELEASE
                     IMPORTED_LOCATION_RELWITHDEBINFO IMPORTED_LOCATION_DEBUG IMPORTED_LOCATION_NOCONFIG)
      get_target_property(location ${target} ${property})
      if(location)
        msc_static_archive_for(archive "${location}")
        if(archive)
          set_target_properties(${target} PROPERTIES ${property} "${archive}")
          # A static archive has no soname; with one CMake would still treat it as shared.
          set_property(TARGET ${target} PROPERTY IMPORTED_NO_SONAME TRUE)
        endif()
      endif()
    endforeach()
  endforeach()
endfunction()

if(MSC_STATIC_DEPS)
  msc_prefer_static_archives()
  # pkg-config's targets list full paths of shared objects; hwloc's archive needs libudev and libm.
  find_library(MSC_UDEV_LIBRARY NAMES udev REQUIRED)
  set_property(TARGET PkgConfig::HWLOC PROPERTY INTERFACE_LINK_LIBRARIES
               ${HWLOC_LIBDIR}/libhwloc.a ${MSC_UDEV_LIBRARY} m)
  set_property(TARGET msc_antlr_runtime PROPERTY INTERFACE_LINK_LIBRARIES antlr4_static uuid)
  # gRPC's Findre2 makes re2::re2 from pkg-config as a bare `re2` (which the linker takes shared).
  if(TARGET re2::re2 AND RE2_LIBDIR AND EXISTS ${RE2_LIBDIR}/libre2.a)
    set_property(TARGET re2::re2 PROPERTY INTERFACE_LINK_LIBRARIES ${RE2_LIBDIR}/libre2.a)
  endif()
endif()
