"""Hard limits that keep every imprinting function bounded in time, memory and stack depth.

Each limit is far above what a model can usefully fill, and each one, when hit, raises a
`TemplateError` with code `limit` that names the place and the limit, never a RecursionError.
"""

# Nesting of objects/arrays in a schema, template, filled template or payload. The walks
# recurse a few Python frames per level; 64 levels stay far below the interpreter's limit.
MAX_NESTING = 64
# Nesting of a whole JSON document read by `parse_json` (documents hold schemas in paths).
MAX_DOCUMENT_NESTING = 256
# Declared properties on one object schema.
MAX_PROPERTIES = 1000
# Values in one enum.
MAX_ENUM_VALUES = 1000
# Nodes (objects, arrays, tokens) in one template. Past REF_NODE_BUDGET, further `$ref`s are
# not expanded but become `{REF: max_depth}` (filled on demand like any marker), so fan-out
# through many distinct refs (large specs) still gives a template; MAX_TEMPLATE_NODES stops
# what remains: inline schemas too large to template, which raise a `limit` error.
REF_NODE_BUDGET = 10_000
MAX_TEMPLATE_NODES = 20_000
# `$ref` hops that lead only to another `$ref` (an alias chain).
MAX_REF_CHAIN = 32
# Alternatives in one {ONE_OF} after allOf members with oneOf/anyOf are multiplied out.
MAX_ALTERNATIVES = 64
# Bytes of JSON text `parse_json` accepts.
MAX_JSON_BYTES = 16 * 1024 * 1024
# Node conversions in one `template_to_payload` call. Choices are tried alternative by
# alternative; memoization keeps that linear, and this budget bounds whatever remains.
MAX_CONVERSION_STEPS = 1_000_000
# Bits of one integer in a payload (about 4,200 decimal digits): Python refuses to write
# integers past 4,300 digits as text, so wider ones could never be sent.
MAX_INTEGER_BITS = 14_000
