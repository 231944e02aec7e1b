
2
xPlaceholder*
dtype0*
shape
:
.
iPlaceholder*
dtype0*
shape:
!
y	IdentityNxi*
T
2"Ú