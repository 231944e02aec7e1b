
2
xPlaceholder*
dtype0*
shape
:
2
yPlaceholder*
dtype0*
shape
:

zXlog1pyxy*
T0"ª