FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# Production: SECRET_KEY is required, never generated (README: Configuration).
ENV SLUICE_ENV=production
WORKDIR /app
COPY pyproject.toml README.md ./
COPY dashboard ./dashboard
COPY scheduler ./scheduler
COPY simcluster ./simcluster
RUN pip install --no-cache-dir .
COPY . .
# The CSS, htmx and Plotly, hashed and compressed, into .run/static: WhiteNoise serves them.
RUN SECRET_KEY=collectstatic python manage.py collectstatic --noinput
EXPOSE 8000
# README: Production. Run `python manage.py migrate --noinput` first (docker-compose's web does).
CMD ["gunicorn", "dashboard.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
