
:
xPlaceholder*
dtype0*
shape:
/
ySqueezex*
T0*
squeeze_dims
"Ú