package postgres

// FilterSQL is filterSQL, for the tests of the plans of lists by prefix.
var FilterSQL = filterSQL
