from detokgui.core.base.numbers import num


def test_numbers_are_shown_one_way():
    assert num(62) == "62" and num(12345) == "12,345"
    assert num(40.81234) == "40.81" and num(62.0) == "62"
    assert num(0.00103) == "0.00103" and num(0.000283) == "2.830e-04"
    assert num(-1.5) == "-1.5" and num(123456.7) == "1.235e+05"
    assert num(float("nan")) == "nan" and num(float("-inf")) == "-inf" and num(0.0) == "0"
