# One image for the web app and the fetcher (docker-compose.yml runs both).
# Stage 1 builds the wheel from the sources; stage 2 installs only that wheel (no checkout in the
# image): templates, static files, migrations and the bundled config travel inside the wheel.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY sparkscope sparkscope
COPY fetcher fetcher
COPY heuristics heuristics
COPY templates templates
COPY static static
COPY migrations migrations
COPY config config
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl \
 && rm -rf /wheels \
 && useradd --create-home sparkscope
USER sparkscope
WORKDIR /home/sparkscope
ENV SPARKSCOPE_CONFIG=/etc/sparkscope/sparkscope.yaml
EXPOSE 8080
CMD ["gunicorn", "--bind", "0.0.0.0:8080", "--workers", "4", "sparkscope.web.app:create_app()"]
