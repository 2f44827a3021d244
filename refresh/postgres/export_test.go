package postgres

// StoreError is storeError, for the tests of the classification of errors
// that the store's own statements cannot provoke.
var StoreError = storeError
