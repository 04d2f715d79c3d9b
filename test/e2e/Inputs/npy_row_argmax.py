"""Prints the argmax of each row of a 2-D float32 .npy (stdlib only)."""
import array, ast, struct, sys

data = open(sys.argv[1], "rb").read()
header_len = struct.unpack("<H", data[8:10])[0]
header = ast.literal_eval(data[10:10 + header_len].decode())
rows, width = header["shape"]
values = array.array("f")
values.frombytes(data[10 + header_len:])
print(" ".join(str(max(range(width), key=lambda c: values[r * width + c])) for r in range(rows)))
