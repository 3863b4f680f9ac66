//go:build !linux

package platform

// OwnPIDNamespace reports whether this process runs in a pid namespace of its own:
// only Linux has pid namespaces, so never here.
func OwnPIDNamespace() bool { return false }
