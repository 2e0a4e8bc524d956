# Generated code's package (see kubox._proto).
