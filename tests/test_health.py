def test_livez_answers_json_without_auth(api):
    response = api.get("/livez")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_checks_the_database(api, db):
    response = api.get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok"}
