package refresh_test

import "runtime"

var runtimeGosched = runtime.Gosched
