
2
xPlaceholder*
dtype0*
shape
:
4
noopNoOp*&
 _has_manual_control_dependencies(
H
yIdentityx^noop*
T0*&
 _has_manual_control_dependencies(

zNegx^noop^y*
T0"Ú