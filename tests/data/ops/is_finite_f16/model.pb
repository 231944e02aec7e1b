
2
xPlaceholder*
dtype0*
shape
:

yIsFinitex*
T0"ª