# embed-ui.cmake - turn the console's files (src/serve/ui/) into one C file:
# a byte array per file and the table serve/ui.c looks paths up in.
# Usage: cmake -DDIR=folder -DOUT=file.c -P embed-ui.cmake
file(GLOB files RELATIVE "${DIR}" "${DIR}/*")
list(SORT files)
set(arrays "")
set(table "")
set(i 0)
foreach(f ${files})
  if(IS_DIRECTORY "${DIR}/${f}" OR f MATCHES "^\\.")
    continue()
  endif()
  file(READ "${DIR}/${f}" hex HEX)
  string(LENGTH "${hex}" n)
  math(EXPR n "${n} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
  string(REGEX REPLACE "((0x..,){16})" "\\1\n" body "${body}")
  string(APPEND arrays "static const unsigned char f${i}[] = {\n${body}0x00};\n")
  string(APPEND table "    {\"${f}\", f${i}, ${n}},\n")
  math(EXPR i "${i} + 1")
endforeach()
file(WRITE "${OUT}" "/* Generated from ${DIR} by cmake/embed-ui.cmake; do not edit. */
#include \"serve/internal.h\"
${arrays}
const struct serve_asset serve_ui_assets[] = {
${table}};
const size_t serve_ui_nassets = ${i};
")
