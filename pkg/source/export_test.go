package source

// BlockToJSON is blockToJSON for the external tests.
var BlockToJSON = blockToJSON
