// lib/libgraphjit.so is made of graphjit's folder libraries, linked whole (see
// release/CMakeLists.txt); a shared library needs one source of its own.
