# toolchain-aarch64-linux-gnu.cmake - tessera for arm64 (GH200 and other
# aarch64 hosts), cross-compiled here by Debian 12's cross compiler against
# the arm64 builds of its libraries, installed beside the native ones by dpkg
# multiarch (scripts/install-deps cross): no sysroot, the headers are the
# shared /usr/include, the libraries and .pc files those of
# /usr/lib/aarch64-linux-gnu. `make image-arm64` uses it:
#   cmake -S . -B build-arm64 -G Ninja --toolchain cmake/toolchain-aarch64-linux-gnu.cmake
# The tests are not built (CMakeLists.txt): they would not run here.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(TESSERA_TRIPLET aarch64-linux-gnu)
# the Debian architecture: the image's (scripts/build-image --arch)
set(TESSERA_DEBIAN_ARCH arm64)
set(CMAKE_C_COMPILER ${TESSERA_TRIPLET}-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE ${TESSERA_TRIPLET})

# pkg-config reads only the arm64 .pc files (and the architecture-free ones).
# Set on the first reading: CMake reads this file again for each try_compile,
# in the same process and environment but with another CMAKE_BINARY_DIR.
#
# libpq-dev cannot be installed for two architectures in Debian 12 (it is not
# Multi-Arch: same), so only libpq5:arm64 is: the build folder gets a libpq.pc
# and the libpq.so link to it. The headers are the native libpq-dev's: the
# three tessera reads (libpq-fe.h, postgres_ext.h, pg_config_ext.h) are the
# same bytes in the arm64 package (compared for 15.20-0+deb12u1).
if(NOT DEFINED ENV{TESSERA_CROSS_LIBPQ})
  set(libpq ${CMAKE_BINARY_DIR}/cross-libpq)
  set(ENV{TESSERA_CROSS_LIBPQ} ${libpq})
  execute_process(COMMAND dpkg-query -W -f=\${Version} libpq5:${TESSERA_DEBIAN_ARCH}
                  OUTPUT_VARIABLE libpq_version ERROR_QUIET)
  if(NOT EXISTS /usr/lib/${TESSERA_TRIPLET}/libpq.so.5 OR libpq_version STREQUAL "")
    message(FATAL_ERROR
            "libpq5:${TESSERA_DEBIAN_ARCH} is not installed (scripts/install-deps cross)")
  endif()
  set(ENV{PKG_CONFIG_PATH} "")
  set(ENV{PKG_CONFIG_LIBDIR}
      "/usr/lib/${TESSERA_TRIPLET}/pkgconfig:/usr/share/pkgconfig:${libpq}/pkgconfig")
  file(MAKE_DIRECTORY ${libpq}/pkgconfig)
  file(CREATE_LINK /usr/lib/${TESSERA_TRIPLET}/libpq.so.5 ${libpq}/libpq.so SYMBOLIC)
  file(WRITE ${libpq}/pkgconfig/libpq.pc
       "Name: libpq\nDescription: libpq5:${TESSERA_DEBIAN_ARCH} with the native headers\n"
       "Version: ${libpq_version}\nCflags: -I/usr/include/postgresql\nLibs: -L${libpq} -lpq\n")
endif()
