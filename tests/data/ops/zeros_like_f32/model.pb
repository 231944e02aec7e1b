
;
xPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ

y	ZerosLikex*
T0"Ú