FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY dashboard ./dashboard
COPY scheduler ./scheduler
COPY simcluster ./simcluster
RUN pip install --no-cache-dir .
COPY . .
RUN SECRET_KEY=collectstatic python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["gunicorn", "dashboard.wsgi:application", "--bind", "0.0.0.0:8000"]
