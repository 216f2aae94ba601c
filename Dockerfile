# One image for the web app and the fetcher (docker-compose.yml runs both).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY sparkscope sparkscope
COPY fetcher fetcher
COPY heuristics heuristics
COPY templates templates
COPY static static
COPY migrations migrations
COPY config config
RUN pip install --no-cache-dir -e . \
 && useradd --create-home sparkscope
USER sparkscope
ENV SPARKSCOPE_CONFIG=/etc/sparkscope/sparkscope.yaml
EXPOSE 8080
CMD ["gunicorn", "--bind", "0.0.0.0:8080", "--workers", "4", "sparkscope.app:create_app()"]
