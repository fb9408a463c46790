//go:build libagent_pkgconfig

package agent

// An installed libagent (`make install PREFIX=...`), found through pkg-config: build with
// `go build -tags libagent_pkgconfig` (set PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig if needed).

// #cgo pkg-config: libagent
import "C"
