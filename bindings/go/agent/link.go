package agent

// The library is an installed libagent found through pkg-config (`make install PREFIX=...`;
// set PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig for a prefix pkg-config does not search). The
// installed libagent.pc carries the run path of its library directory, so the program starts
// without LD_LIBRARY_PATH. Inside the libagent repository, `make go-test` points
// PKG_CONFIG_PATH at build/pkgconfig, whose libagent.pc names the freshly built target/debug.

// #cgo pkg-config: libagent
import "C"
