package postgres

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// TestClonePolicyCoversEveryReference fails when refresh.Policy gains a
// field that can share memory (slice, map, pointer) that clonePolicy does
// not copy: add it there, then here.
func TestClonePolicyCoversEveryReference(t *testing.T) {
	copied := map[string]bool{
		"Retry.Delays": true, "Retry.RetryOn": true, "Retry.NonRetryable": true,
		"Retry.Backoff": true, "Retry.Align": true,
	}
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for f := range typ.Fields() {
			name := prefix + f.Name
			switch f.Type.Kind() {
			case reflect.Struct:
				walk(name+".", f.Type)
			case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func:
				require.True(t, copied[name], "clonePolicy does not copy %s", name)
				if f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct {
					for g := range f.Type.Elem().Fields() {
						switch g.Type.Kind() {
						case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
							t.Errorf("clonePolicy copies %s shallowly but %s.%s is a reference", name, name, g.Name)
						}
					}
				}
			}
		}
	}
	walk("", reflect.TypeFor[refresh.Policy]())
}
