"""The wire contract: method names (``methods``), params and results as attrs types
(``types``), the camelCase converter (``converter``), error codes (``errors``) and
the JSON Schema generated from the types (``schema``)."""
