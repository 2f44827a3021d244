package refresh

// PropagateBatch is propagateBatch, for the tests of package refresh_test.
const PropagateBatch = propagateBatch
