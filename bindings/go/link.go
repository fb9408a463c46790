//go:build !libagent_pkgconfig

package agent

// Default build: the library built by `cargo build` in the repository root (target/debug).
// Build with `-tags libagent_pkgconfig` to use an installed library instead (link_pkgconfig.go).

// #cgo CFLAGS: -I${SRCDIR}/../../include
// #cgo LDFLAGS: -L${SRCDIR}/../../target/debug -lagent -Wl,-rpath,${SRCDIR}/../../target/debug
import "C"
