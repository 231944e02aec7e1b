
;
xPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ

y
LogSoftmaxx*
T0"Ú